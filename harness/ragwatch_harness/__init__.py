"""ragwatch's harness: the benchmarks behind the docs' figures and the embedded demo, apart from the
product."""
