"""SPL methods and baselines, each a scikit-learn estimator (see :mod:`spl_bench.methods.base`).

Methods are built from Hydra configs (``configs/method/*.yaml``) through their
``_target_`` class path, so adding one is one module plus one config file.
"""
