"""What dispatch is told (harness/calling/options.py) defaults to what the options declare (harness/config/sections.py
ApiOptions), so a DispatchOptions() in a test or a library call dispatches as a run with no flags does (issue 43)."""

from __future__ import annotations

import dataclasses

from harness.calling.options import DispatchOptions, dispatch_options
from harness.config.sections import ApiOptions
from harness.config.settings import RunConfig


def test_dispatch_defaults_are_the_declared_api_defaults() -> None:
    from_run = dispatch_options(RunConfig(model="m"), None)
    bare = DispatchOptions()
    assert (bare.concurrency, bare.retry) == (from_run.concurrency, from_run.retry)
    # and a changed declaration moves both: the values are read from it, not restated
    declared = {f.name: f.default for f in dataclasses.fields(ApiOptions)}
    assert (bare.concurrency, bare.retry.max_retries, bare.retry.timeout, bare.retry.wait_for_server) == (
        declared["concurrency"],
        declared["max_retries"],
        declared["timeout"],
        declared["wait_for_server"],
    )
