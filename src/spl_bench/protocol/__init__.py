"""The evaluation protocol: splits, noise, preprocessing, λ selection and metrics."""

from spl_bench.protocol.run import NoiseConfig, ProtocolConfig, RunOutcome, run_once
from spl_bench.protocol.splits import split_indices, validation_split

__all__ = ["NoiseConfig", "ProtocolConfig", "RunOutcome", "run_once", "split_indices", "validation_split"]
