"""Every setting of a run, its default and its checks, in one home."""
