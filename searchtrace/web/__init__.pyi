from searchtrace.web._app import create_app as create_app
from searchtrace.web._source import prepare as prepare
