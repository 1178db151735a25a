"""Side-by-side benchmarks that back the claims in our docs."""
