"""Run folders both ways: claim, write atomically, read back."""
