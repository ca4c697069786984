"""Shared test configuration: Hypothesis profiles. The derandomized `ci` profile is the default,
so the README's test command gives the same result on every machine; `dev` draws new examples
on each run."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("long", max_examples=5000, deadline=None)
# The Hypothesis fuzz suite at scale (tests/fuzz); the million-input run is tests/fuzz/run_long.py.
settings.register_profile(
    "fuzz", max_examples=20_000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
