"""The explainer's core: the key of a call, the diff of two keys, reasons and their words,
and the report's data model. Pure functions and frozen data; no hooks, no rendering.
"""
