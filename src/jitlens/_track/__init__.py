"""Tracking: the registry of jitted functions, the patches and monitoring listeners that
feed it, the tracker window, and the compile budgets (guards, scopes).
"""
