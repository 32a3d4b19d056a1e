"""A request body is JSON in UTF-8 (RFC 8259 §8.1) or refused in the OpenAI error shape:
a ``Content-Type`` other than ``application/json``, or whose ``charset`` is not UTF-8, is a
415 (``unsupported_media_type``) naming what was given; a body in UTF-16 or UTF-32, or
whose bytes stop being UTF-8, a 400 (``invalid_json``) saying so and where. A leading UTF-8
byte order mark is ignored, as RFC 8259 allows."""

from __future__ import annotations

import codecs
import json
import urllib.error
import urllib.request

import pytest

from edgespec.runtime.openai_api.schema import decode_body
from edgespec.runtime.openai_api.serve import ApiThread
from tests.runtime.openai_api.conftest import MODEL, _error, _post

BODY = {"model": MODEL, "prompt": "w1", "max_tokens": 2}
UTF8 = json.dumps(BODY).encode()


@pytest.mark.parametrize(
    "media", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]
)
def test_a_body_that_does_not_say_it_is_json_is_415(api: ApiThread, media: str) -> None:
    """What a web page may POST cross-site without a preflight starts no generation."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{api.port}/v1/completions", method="POST",
        data=json.dumps({"model": MODEL, "prompt": "w1", "max_tokens": 2}).encode(),
        headers={"Content-Type": media},
    )  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=30)
    error = json.loads(info.value.read())["error"]
    assert (info.value.code, error["code"]) == (415, "unsupported_media_type")


@pytest.mark.parametrize(
    ("content_type", "raw", "charset"),
    [
        ("application/json; charset=utf-16", json.dumps(BODY).encode("utf-16"), "utf-16"),
        ("application/json;charset=ISO-8859-1", UTF8, "ISO-8859-1"),
        ('application/json; charset="UTF-32"', UTF8, "UTF-32"),
        ("application/json; charset=", UTF8, ""),
    ],
    ids=["utf-16", "latin-1", "quoted", "empty"],
)
def test_a_charset_other_than_utf8_is_415_naming_it(
    api: ApiThread, content_type: str, raw: bytes, charset: str
) -> None:
    """The charset was ignored: a UTF-16 body said to be UTF-16 ran (JSON's own detection
    read it), as did UTF-8 bytes said to be Latin-1."""
    status, error = _error(api, raw, content_type=content_type)
    assert (status, error["type"], error["param"], error["code"], error["message"]) == (
        415, "invalid_request_error", None, "unsupported_media_type",
        f"request body charset is {json.dumps(charset)}; only utf-8 is accepted",
    )  # fmt: skip


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/json; charset=utf-8", "application/json;charset=UTF8",
     'Application/JSON; Charset="utf-8"'],
)  # fmt: skip
def test_utf8_said_or_not_is_read(api: ApiThread, content_type: str) -> None:
    status, reply, _ = _post(api, "/v1/completions", UTF8, content_type)
    assert (status, reply["usage"]["completion_tokens"]) == (200, 2), reply


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"model": "ti\xffny"}',
         "request body is not valid utf-8 at byte offset 13 (0xff: invalid start byte)"),
        (b'{"model": "\xed\xa0\x80"}',  # a surrogate encoded: no UTF-8 (it was let through)
         "request body is not valid utf-8 at byte offset 11 (0xed: invalid continuation byte)"),
        (b'{"model": "tin\xc3"}',  # cut inside a character
         "request body is not valid utf-8 at byte offset 14 (0xc3: invalid continuation byte)"),
        (json.dumps(BODY).encode("utf-16"),
         "request body is encoded as utf-16; only utf-8 is accepted"),
        (json.dumps(BODY).encode("utf-16-le"),
         "request body is encoded as utf-16-le; only utf-8 is accepted"),
        (json.dumps(BODY).encode("utf-32-be"),
         "request body is encoded as utf-32-be; only utf-8 is accepted"),
    ],
    ids=["invalid-byte", "encoded-surrogate", "cut-character", "utf-16", "utf-16-le",
         "utf-32-be"],
)  # fmt: skip
def test_a_body_not_in_utf8_is_400_saying_where(api: ApiThread, raw: bytes, message: str) -> None:
    """Invalid bytes were "not valid JSON: 'utf-8' codec can't decode byte 0xff in
    position 13: ..."; UTF-16 and UTF-32 bodies ran (JSON's own detection read them)."""
    status, error = _error(api, raw)
    assert (status, error["param"], error["code"], error["message"]) == (
        400, None, "invalid_json", message
    )  # fmt: skip


def test_a_utf8_byte_order_mark_is_ignored(api: ApiThread) -> None:
    """RFC 8259 forbids sending one but lets a parser ignore it (some Windows tools write
    one): the request runs."""
    status, reply, _ = _post(api, "/v1/completions", codecs.BOM_UTF8 + UTF8)
    assert (status, reply["usage"]["completion_tokens"]) == (200, 2), reply
    assert decode_body(codecs.BOM_UTF8 + b'{"a": "\\ufeff"}') == {"a": "\ufeff"}  # one dropped
