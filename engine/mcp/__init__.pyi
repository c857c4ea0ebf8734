from searchtrace.engine.mcp._serve import serve as serve
from searchtrace.engine.mcp._serve import wrap as wrap
from searchtrace.engine.mcp._wrap import Outcome as Outcome
