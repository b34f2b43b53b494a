"""`nn2c sweep`: profile every candidate of an MCUNet-style search space on Ray (see run.py)."""

from nn2c.sweep.run import SweepResult, evaluate, read_results, run_sweep
from nn2c.sweep.space import (
           Candidate,
           SearchSpace,
           build_candidate,
           candidates,
           load_space,
           parse_space,
)

__all__ = ["Candidate", "SearchSpace", "SweepResult", "build_candidate", "candidates", "evaluate", "load_space",
           "parse_space", "read_results", "run_sweep"]
