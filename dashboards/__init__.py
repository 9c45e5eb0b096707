"""Superset dashboards as code: the asset bundle (bundle/) and the tools that import and export it."""
