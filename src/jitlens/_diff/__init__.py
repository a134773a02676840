"""``jitlens diff``: two runs' reports compared (model, logic, text, command line)."""
