"""Small hypothesis profiles (as in packages/core/tests/conftest.py) and one thread."""

from __future__ import annotations

import os

import torch
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
torch.set_num_threads(1)
