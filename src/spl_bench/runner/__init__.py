"""Command line, Hydra application and results files."""
