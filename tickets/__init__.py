"""Tickets from anomalies: one ticket per problem, kept in step with the anomalies topic.

Pure parts (``body``, ``policy``, ``reconcile``) are apart from I/O (``backends``,
``alertmanager``, ``service``). See README.md.
"""
