"""spl-bench: an experiment runner for self-paced learning (SPL).

The package is layered, and imports only go one way::

    data  ->  models / sp  ->  gaga  ->  methods  ->  protocol  ->  report  ->  runner

with the helper modules (``errors``, ``paths``, ``checks``, ``progress``, ``rowfiles``) below
every layer; ``tests/test_layers.py`` enforces it.

See ``docs/conventions.md`` for the objective conventions every method shares.
"""

__version__ = "0.1.0"
