from searchtrace.cli._main import COMMANDS as COMMANDS
from searchtrace.cli._main import cli as cli
from searchtrace.cli._main import main as main
