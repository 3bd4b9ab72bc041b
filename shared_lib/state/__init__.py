"""Session state and pending confirmations (seed 000 §5.1.5–5.1.7), changed only in transactions."""
