"""Scoring anomalies against labels, beside the WLCG/OSG baseline rules."""
