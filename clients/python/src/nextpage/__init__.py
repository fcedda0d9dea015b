"""A client for nextpage, the JSON-RPC server that pages through paginated sources.

    from nextpage import NextPage

    with NextPage() as np:                 # starts `nextpage` ($NEXTPAGE, or the one on PATH)
        for item in np.items("demo"):      # loadNext until hasNext is false
            print(item["id"])

:class:`NextPage` blocks; :class:`AsyncNextPage` is its asyncio twin. Errors
are in :mod:`nextpage.errors`, the shapes of replies in :mod:`nextpage.types`.
"""

from .aio import AsyncNextPage
from .client import Call, NextPage
from .errors import (
    ClientError, InternalError, InvalidDefinition, InvalidParams, InvalidRequest, MethodNotFound, NextPageError,
    NextPageNotFound, NotNextPage, PageNotUnderstood, ParseError, RequestCancelled, RequestTimeout, RPCError,
    ServerExited, ShuttingDown, UnknownCollection, UpstreamFailed,
)
from .types import ItemSlice, LoadAllResult, Page, Progress, State

__version__ = "0.1.0"

__all__ = [
    "NextPage", "AsyncNextPage", "Call",
    "NextPageError", "RPCError", "ParseError", "InvalidRequest", "MethodNotFound", "InvalidParams", "InternalError",
    "UnknownCollection", "UpstreamFailed", "PageNotUnderstood", "InvalidDefinition", "RequestCancelled",
    "ShuttingDown", "ClientError", "NextPageNotFound", "NotNextPage", "ServerExited", "RequestTimeout",
    "Page", "State", "ItemSlice", "LoadAllResult", "Progress",
]
