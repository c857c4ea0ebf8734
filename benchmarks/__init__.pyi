from searchtrace.benchmarks._commands import COMMANDS as COMMANDS
