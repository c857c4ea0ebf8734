"""docs/concepts/protocol.md URL normalisation: one example per rule, and idempotence as a property."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from searchtrace.adapters import domain_of, normalize_url


@pytest.mark.parametrize("raw,expected", [
    ("  https://example.org/a  \n", "https://example.org/a"),                       # strip whitespace
    ("HTTPS://Example.ORG/Path", "https://example.org/Path"),                        # scheme + host lower, path kept
    ("https://user:pw@example.org/", "https://example.org/"),                        # user information dropped
    ("http://example.org:80/a", "http://example.org/a"),                             # default http port
    ("https://example.org:443/a", "https://example.org/a"),                          # default https port
    ("https://example.org:80/a", "https://example.org:80/a"),                        # not the default for https
    ("http://example.org:8080/a", "http://example.org:8080/a"),                      # other ports stay
    ("https://example.org", "https://example.org/"),                                 # empty path -> /
    ("https://example.org/", "https://example.org/"),                                # "/" stays
    ("https://example.org/a/b/", "https://example.org/a/b"),                         # one trailing / stripped
    ("https://example.org/a#section", "https://example.org/a"),                      # fragment dropped
    ("https://example.org/?b=2&a=1", "https://example.org/?a=1&b=2"),                # sorted by name
    ("https://example.org/?a=2&a=1", "https://example.org/?a=1&a=2"),                # then by value
    ("https://example.org/?b&a=1", "https://example.org/?a=1&b"),                    # no "=" stays as it is
    ("https://example.org/?x=a=b&x=a", "https://example.org/?x=a&x=a=b"),            # split at the first "="
    ("https://example.org/?q=%41%20b", "https://example.org/?q=%41%20b"),            # no percent-decoding
    ("https://example.org/?utm_source=x&utm_medium=y&id=1", "https://example.org/?id=1"),
    ("https://example.org/?gclid=1&fbclid=2&id=3", "https://example.org/?id=3"),
    ("https://example.org/?UTM_source=1&Gclid=2", "https://example.org/?Gclid=2&UTM_source=1"),  # case-sensitive
    ("https://example.org/?utm_x=1", "https://example.org/"),                        # nothing left: no "?"
    ("https://example.org/?B=1&a=1", "https://example.org/?B=1&a=1"),                # code-point order
    ("HTTP://U@[2001:DB8::1]:80/x/", "http://[2001:db8::1]/x"),                      # IPv6 literal
])
def test_spec_rules(raw: str, expected: str) -> None:
    assert normalize_url(raw) == expected
    assert normalize_url(expected) == expected


def test_rules_apply_in_order_together() -> None:
    raw = " HTTPS://Bob@WWW.Example.COM:443/News/Item/?utm_source=tw&z=1&a=&a#top "
    assert normalize_url(raw) == "https://www.example.com/News/Item?a&a=&z=1"


def test_domain_of() -> None:
    assert domain_of("https://u:p@WWW.Example.org:8443/x") == "www.example.org"
    assert domain_of("http://[::1]:80/") == "[::1]"
    assert domain_of("not a url") == ""


_scheme = st.sampled_from(["http", "https", "HTTP", "HtTpS", "ftp"])
_label = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-", min_size=1, max_size=8)
_host = st.lists(_label, min_size=1, max_size=3).map(".".join)
_port = st.one_of(st.just(""), st.sampled_from([":80", ":443", ":8080", ":"]))
_user = st.one_of(st.just(""), st.sampled_from(["u@", "u:p@", "a@b@"]))
_seg = st.text(alphabet="abcXYZ019-._~%/+", max_size=6)
_path = st.lists(_seg, max_size=4).map(lambda s: "/" + "/".join(s) if s else "")
_name = st.one_of(st.sampled_from(["utm_source", "utm_", "gclid", "fbclid", "a", "B", "", "id"]),
                  st.text(alphabet="abcAB_%2", max_size=4))
_value = st.text(alphabet="ab=12%+ ", max_size=4)
_param = st.tuples(_name, st.one_of(st.none(), _value)).map(lambda t: t[0] if t[1] is None else f"{t[0]}={t[1]}")
_query = st.one_of(st.just(""), st.lists(_param, max_size=5).map(lambda ps: "?" + "&".join(ps)))
_frag = st.one_of(st.just(""), st.text(alphabet="ab#/?", max_size=4).map(lambda f: "#" + f))
_ws = st.sampled_from(["", " ", "\t", "\n "])
urls = st.builds(lambda w1, s, u, h, p, pa, q, f, w2: f"{w1}{s}://{u}{h}{p}{pa}{q}{f}{w2}",
                 _ws, _scheme, _user, _host, _port, _path, _query, _frag, _ws)


@settings(max_examples=400, deadline=None)
@given(urls)
def test_normalising_twice_changes_nothing(url: str) -> None:
    once = normalize_url(url)
    assert normalize_url(once) == once


@settings(max_examples=300, deadline=None)
@given(urls)
def test_normalised_form_obeys_the_rules(url: str) -> None:
    out = normalize_url(url)
    assert out == out.strip() and "#" not in out
    scheme, rest = out.split("://", 1)
    assert scheme == scheme.lower()
    authority = rest.split("/", 1)[0]
    assert "@" not in authority and authority == authority.lower()
    assert not (scheme == "http" and authority.endswith(":80")) and not (scheme == "https" and authority.endswith(":443"))
    path_and_query = "/" + rest.split("/", 1)[1] if "/" in rest else ""
    path, _, query = path_and_query.partition("?")
    assert path.startswith("/") and (path == "/" or not path.endswith("/"))
    params = query.split("&") if query else []
    names = [p.partition("=")[0] for p in params]
    assert not any(n.startswith("utm_") or n in ("gclid", "fbclid") for n in names)
    keys = [(p.partition("=")[0], p.partition("=")[2]) for p in params]
    assert keys == sorted(keys)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_text_is_idempotent_and_never_raises(text: str) -> None:
    once = normalize_url(text)
    assert normalize_url(once) == once
