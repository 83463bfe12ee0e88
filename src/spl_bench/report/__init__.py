"""Aggregation of results into paper-style tables and figures."""
