"""The fine-tuning data pipeline (seed 001 §29): staging of good and corrected turns, their
human review, and the export of accepted examples in a provider's format with a dataset card."""
