"""Security headers on every response the app gives (one after_request hook, `add_security_headers`), and on the
HTTP server's own error responses (api/serve.py takes `SERVER_HEADERS`).

Every response gets `X-Content-Type-Options: nosniff` (a browser never reads JSON or a PNG as HTML or script),
`X-Frame-Options: DENY` with the CSP's `frame-ancestors 'none'` (no page of ours can be framed, so no clickjacking;
the older header for browsers without CSP 2), `Referrer-Policy: no-referrer` (ids in our URLs never leave in a
Referer) and a Content-Security-Policy chosen by who answers:

- the viewer's pages (api/viewer.py): only this server's script files and stylesheet, images from here or data
  URLs, forms to here;
- the API documentation (flask-openapi3's Swagger UI under /docs, served from our own template `SWAGGER_HTML`, so
  its start-up code is a script file rather than inline, and its index at /docs/ from `DOCS_INDEX_HTML`): the
  same, plus `connect-src 'self'` for the spec and "Try it out", and inline styles, which Swagger UI inserts;
- everything else (JSON, problem documents, PNG charts, the spec, /metrics, redirects): `default-src 'none'`, so
  a document that a browser opens anyway runs and loads nothing.
"""

from __future__ import annotations

from flask import Response, request

# Every response, whoever answers (the app, or the HTTP server itself for 400/408/413/431/500).
COMMON_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
# No script, style, image, frame or form: for anything that is not one of our HTML pages.
NOTHING_POLICY = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; img-src 'self' data:; style-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
# Swagger UI inserts a <style> element when it starts (its hash changes with its version): inline styles are
# allowed on the docs pages; inline scripts are not.
DOCS_POLICY = (
    "default-src 'none'; script-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SERVER_HEADERS = {**COMMON_HEADERS, "Content-Security-Policy": NOTHING_POLICY}
# The blueprints whose responses are HTML pages: the viewer's, and the docs' (flask-openapi3's index at /docs/,
# its Swagger UI plugin at /docs/swagger, their static files).
PAGE_BLUEPRINTS = {"viewer": PAGE_POLICY, "openapi": DOCS_POLICY, "swagger": DOCS_POLICY}

# Swagger UI's page, as flask-openapi3-swagger renders it (its SWAGGER_HTML_STRING setting) but without inline
# code: its start-up (api/static/swagger-init.js) reads the spec's URL from a data attribute.
SWAGGER_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<title>optsched API</title>
<link rel="icon" href="swagger/images/swagger.svg">
<link rel="stylesheet" href="swagger/css/swagger-ui.css">
<link rel="stylesheet" href="{{ asset_url('swagger.css') }}">
</head>
<body>
<div id="swagger-ui" data-spec-url="{{ doc_url }}"></div>
<script src="swagger/js/swagger-ui-bundle.js"></script>
<script src="swagger/js/swagger-ui-standalone-preset.js"></script>
<script src="{{ asset_url('swagger-init.js') }}"></script>
</body>
</html>
"""

# The index of the documentation UIs at /docs/ (flask-openapi3's OPENAPI_HTML_STRING), as plain links: the
# package's own page navigates with inline event handlers and styles itself inline.
DOCS_INDEX_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<title>optsched API documentation</title>
<link rel="icon" href="swagger/images/swagger.svg">
<link rel="stylesheet" href="{{ asset_url('swagger.css') }}">
</head>
<body>
<main class="docs-index">
<h1>optsched API documentation</h1>
<ul>
{% for ui in ui_templates %}<li><a href="{{ ui.name }}">{{ ui.display_name }}</a></li>
{% endfor %}<li><a href="openapi.json">the OpenAPI document (JSON)</a></li>
</ul>
</main>
</body>
</html>
"""


def policy_for(blueprint: str | None) -> str:
    """The Content-Security-Policy of a response from `blueprint` (None: the app itself)."""
    return PAGE_BLUEPRINTS.get(blueprint or "", NOTHING_POLICY)


def add_security_headers(response: Response) -> Response:
    """App-wide after_request: the headers above, on every response (errors included: Flask runs after_request
    hooks on the responses its error handlers return). A header a view set itself is kept."""
    for name, value in COMMON_HEADERS.items():
        response.headers.setdefault(name, value)
    response.headers.setdefault("Content-Security-Policy", policy_for(request.blueprint))
    return response
