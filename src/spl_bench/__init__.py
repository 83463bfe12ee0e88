"""spl-bench: an experiment runner for self-paced learning (SPL).

The package is layered, and imports only go one way::

    data  ->  models / sp  ->  methods  ->  protocol  ->  runner / report

See ``docs/conventions.md`` for the objective conventions every method shares.
"""

__version__ = "0.1.0"
