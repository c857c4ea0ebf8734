from searchtrace.adapters import _anthropic_messages, _gemini, _hosted, _openai_chat
from searchtrace.adapters._batches import BATCH_APIS as BATCH_APIS
from searchtrace.adapters._batches import ItemResult as ItemResult
from searchtrace.adapters._batches import ModelBatches as ModelBatches
from searchtrace.adapters._batches import Polled as Polled
from searchtrace.adapters._batches import Submitted as Submitted
from searchtrace.adapters._chat_shapes import content_text as content_text
from searchtrace.adapters._errors import AdapterError as AdapterError
from searchtrace.adapters._errors import ChatError as ChatError
from searchtrace.adapters._errors import MissingKey as MissingKey
from searchtrace.adapters._fetch_cache import FetchCache as FetchCache
from searchtrace.adapters._fetch_cache import default_cache_dir as default_cache_dir
from searchtrace.adapters._hosted import HostedFetch as HostedFetch
from searchtrace.adapters._hosted import HostedSearch as HostedSearch
from searchtrace.adapters._hosted import HostedTurn as HostedTurn
from searchtrace.adapters._hosted import agent_reply as agent_reply
from searchtrace.adapters._hosted import continued as continued
from searchtrace.adapters._hosted import hosted_request as hosted_request
from searchtrace.adapters._hosted import read_hosted as read_hosted
from searchtrace.adapters._hosted import resolved as resolved
from searchtrace.adapters._http import EndpointClient as EndpointClient
from searchtrace.adapters._http import default_transport as default_transport
from searchtrace.adapters._http import quota_limiter as quota_limiter
from searchtrace.adapters._jina import JinaFetcher as JinaFetcher
from searchtrace.adapters._jina import estimate_tokens as estimate_tokens
from searchtrace.adapters._jina import page_markdown as page_markdown
from searchtrace.adapters._keys import KEY_MARKER as KEY_MARKER
from searchtrace.adapters._keys import Secret as Secret
from searchtrace.adapters._keys import configured_secrets as configured_secrets
from searchtrace.adapters._keys import default_key_env as default_key_env
from searchtrace.adapters._keys import is_key_name as is_key_name
from searchtrace.adapters._keys import read_key as read_key
from searchtrace.adapters._keys import scrub_bytes as scrub_bytes
from searchtrace.adapters._keys import scrub_named as scrub_named
from searchtrace.adapters._keys import scrub_named_bytes as scrub_named_bytes
from searchtrace.adapters._keys import scrub_named_text as scrub_named_text
from searchtrace.adapters._keys import scrub_parsed as scrub_parsed
from searchtrace.adapters._keys import scrub_text as scrub_text
from searchtrace.adapters._limiter import RateLimiter as RateLimiter
from searchtrace.adapters._limiter import Slots as Slots
from searchtrace.adapters._limiter import domain_interval as domain_interval
from searchtrace.adapters._limiter import domain_limiter as domain_limiter
from searchtrace.adapters._local_server import MAX_DEPTH as MAX_DEPTH
from searchtrace.adapters._local_server import LocalGuard as LocalGuard
from searchtrace.adapters._local_server import MiB as MiB
from searchtrace.adapters._local_server import bind_local as bind_local
from searchtrace.adapters._local_server import json_too_deep as json_too_deep
from searchtrace.adapters._local_server import refusal as refusal
from searchtrace.adapters._local_server import serve_local as serve_local
from searchtrace.adapters._mcp_results import READERS as READERS
from searchtrace.adapters._mcp_results import read_hits as read_hits
from searchtrace.adapters._openai_chat import API_ENDPOINTS as API_ENDPOINTS
from searchtrace.adapters._openai_chat import ENDPOINT as ENDPOINT
from searchtrace.adapters._openai_chat import OpenAIChat as OpenAIChat
from searchtrace.adapters._openai_chat import api_headers as api_headers
from searchtrace.adapters._openai_chat import assemble as assemble
from searchtrace.adapters._openai_chat import assemble_chunks as assemble_chunks
from searchtrace.adapters._openai_chat import call_path as call_path
from searchtrace.adapters._openai_chat import model_of as model_of
from searchtrace.adapters._openai_chat import parse_completion as parse_completion
from searchtrace.adapters._openai_chat import parse_reply as parse_reply
from searchtrace.adapters._openai_chat import request_body as request_body
from searchtrace.adapters._openai_chat import request_evidence as request_evidence
from searchtrace.adapters._protocols import ChatModel as ChatModel
from searchtrace.adapters._protocols import ClosableChat as ClosableChat
from searchtrace.adapters._protocols import Fetcher as Fetcher
from searchtrace.adapters._protocols import SearchProvider as SearchProvider
from searchtrace.adapters._registry import FETCHERS as FETCHERS
from searchtrace.adapters._registry import SANDBOX_KEY as SANDBOX_KEY
from searchtrace.adapters._registry import SEARCH_PROVIDERS as SEARCH_PROVIDERS
from searchtrace.adapters._registry import build_chat as build_chat
from searchtrace.adapters._registry import build_fetcher as build_fetcher
from searchtrace.adapters._registry import build_search as build_search
from searchtrace.adapters._registry import default_endpoint as default_endpoint
from searchtrace.adapters._registry import endpoints as endpoints
from searchtrace.adapters._registry import paper_providers as paper_providers
from searchtrace.adapters._registry import sandbox_endpoint as sandbox_endpoint
from searchtrace.adapters._registry import search_provider_names as search_provider_names
from searchtrace.adapters._registry import spec as spec
from searchtrace.adapters._registry import specs as specs
from searchtrace.adapters._responses_api import assemble_events as assemble_events
from searchtrace.adapters._responses_api import chat_messages as chat_messages
from searchtrace.adapters._responses_api import input_items as input_items
from searchtrace.adapters._responses_api import parse_response as parse_response
from searchtrace.adapters._responses_api import tools_to_chat as tools_to_chat
from searchtrace.adapters._search_base import SearchAdapter as SearchAdapter
from searchtrace.adapters._search_base import shorten as shorten
from searchtrace.adapters._toolset import Tools as Tools
from searchtrace.adapters._toolset import pick as pick
from searchtrace.adapters._toolset import read_page as read_page
from searchtrace.adapters._toolset import read_results as read_results
from searchtrace.adapters._types import TRACE_HEADER as TRACE_HEADER
from searchtrace.adapters._types import TRACE_HEADER_RAW as TRACE_HEADER_RAW
from searchtrace.adapters._types import ChatResponse as ChatResponse
from searchtrace.adapters._types import Endpoint as Endpoint
from searchtrace.adapters._types import FetchResponse as FetchResponse
from searchtrace.adapters._types import RetryInfo as RetryInfo
from searchtrace.adapters._types import SearchHit as SearchHit
from searchtrace.adapters._types import SearchResponse as SearchResponse
from searchtrace.adapters._urls import base_url_problem as base_url_problem
from searchtrace.adapters._urls import domain_of as domain_of
from searchtrace.adapters._urls import norm_url as norm_url
from searchtrace.adapters._urls import normalize_url as normalize_url
from searchtrace.adapters._urls import url_domain as url_domain
from searchtrace.adapters.providers.brave import BraveSearch as BraveSearch
from searchtrace.adapters.providers.firecrawl import FirecrawlSearch as FirecrawlSearch
from searchtrace.adapters.providers.tavily import TavilySearch as TavilySearch

ANTHROPIC_ENDPOINT = _anthropic_messages.ENDPOINT
ANTHROPIC_PATH = _anthropic_messages.PATH
CHAT_APIS = _openai_chat.APIS
GEMINI_ENDPOINT = _gemini.ENDPOINT
HOSTED_API = _hosted.API
HOSTED_ENDPOINT = _hosted.ENDPOINT
HOSTED_LAYERS = _hosted.LAYERS
HOSTED_OPAQUE = _hosted.OPAQUE
PAUSE_TURN = _anthropic_messages.PAUSE_TURN
