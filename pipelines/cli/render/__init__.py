"""What the CLI prints: tables and lines a person reads, apart from the commands that compute
them."""
