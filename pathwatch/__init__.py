"""pathwatch: streaming analytics and anomaly detection for network performance measurements."""

__version__ = "0.1.0"
