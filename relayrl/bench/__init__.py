"""Benchmarks behind ``relayrl bench``: each one times relayrl against a named baseline in
the same process and reports ratios, never absolute targets alone."""
