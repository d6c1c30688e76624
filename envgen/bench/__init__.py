"""Speed and fidelity benchmarks, each against its reference measured in the same run
(`envgen bench TARGET`; the targets are listed in `envgen.bench.cli`)."""
