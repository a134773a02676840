"""Renderers: pure functions from a :class:`~jitlens.Report` to terminal text, HTML, SVG
and Chrome/Perfetto trace events. They never raise into the user's program.
"""
