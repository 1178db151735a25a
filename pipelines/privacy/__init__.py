"""Rule-based PII detection and keyed pseudonymization of traces."""
