"""Hypothesis strategies for scenarios: geometry, token locations and windows, data, life cycles."""

from scenarios.strategies.scenario import scenarios

__all__ = ["scenarios"]
