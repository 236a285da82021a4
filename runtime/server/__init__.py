"""``paddock serve``: one long-lived owner of a state directory, serving its Runtime over HTTP.

Needs the ``server`` extra (Starlette, uvicorn). :func:`serve` runs the server in the calling
(main) thread; :func:`build_app` gives the ASGI app for a host's own server; :func:`openapi_document`
is the API's OpenAPI 3.1 description. The client side is :mod:`paddock.client`.
"""

from paddock.server._app import build_app as build_app
from paddock.server._openapi import openapi_document as openapi_document
from paddock.server._serve import parse_listen as parse_listen, serve as serve

__all__ = ["build_app", "openapi_document", "parse_listen", "serve"]
