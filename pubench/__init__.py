"""pubench: reproduce the tables of five PU / debiased contrastive learning papers."""

__version__ = "0.1.0"
