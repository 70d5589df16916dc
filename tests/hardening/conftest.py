"""What the hardening tests (issue 12) share: the token, and the checks of a problem document. Their apps and servers
come from tests/support/apps.py."""

from __future__ import annotations

TOKEN = "hardening-token-7d41c0e9"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def problem(response, status: int) -> dict:
    """The problem document of a Flask test response, checked: status, media type, `status` member."""
    assert response.status_code == status, (response.status_code, response.get_data(as_text=True)[:500])
    assert response.mimetype == "application/problem+json", response.mimetype
    body = response.get_json()
    assert body["status"] == status
    return body


def paths(response) -> list[str]:
    return [e["path"] for e in problem(response, 422)["errors"]]
