"""Requests the server makes to addresses people typed (URL imports, Label Studio connections).

The rule: only public internet addresses, unless an operator allows more. A host name is
resolved once, every address it resolves to is checked, and the connection goes to the checked
address (the name is kept for the Host header and TLS), so a name that resolves to a public
address for the check and to an internal one for the connection (DNS rebinding) gets nowhere.
Every redirect hop goes through the same check, and a download has a total deadline.
"""

import ipaddress
import socket
import time
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from .errors import DomainError
from .inputs import is_digits

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0  # one silent read; the whole download is bounded by the deadline
MAX_REDIRECTS = 5
USER_AGENT = "benchforge-image-import"


class Refused(DomainError):
    code = "address_refused"


def is_public(address: str) -> bool:
    """True for a globally routable unicast address. Everything else is refused: private, loopback,
    link-local (cloud metadata at 169.254.169.254), shared/carrier-grade NAT (100.64.0.0/10),
    reserved, multicast, and IPv6 forms that embed such an IPv4 address."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is None and ip in ipaddress.ip_network("64:ff9b::/96"):  # NAT64
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None and not is_public(str(embedded)):
            return False
    return ip.is_global and not ip.is_multicast


def resolve_checked(host: str, port: int, *, allow_private: bool = False) -> str:
    """The address to connect to for `host`: every address it resolves to must be public."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise Refused(f"Cannot resolve host '{host}'.") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not addresses:
        raise Refused(f"Cannot resolve host '{host}'.")
    if not allow_private:
        for address in addresses:
            if not is_public(address):
                raise Refused(f"Refusing to connect to an internal address ({host} is {address}).")
    return addresses[0]


def _check_form(url: str):
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused("Only http:// and https:// URLs with a host name can be used.")
    return parts


def check_url(url: str, *, allow_private: bool = False) -> str:
    """Refuse a URL that is not http(s) or whose host is internal; returns the checked address."""
    parts = _check_form(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise Refused(f"The URL has an invalid port: {url[:200]}") from None
    return resolve_checked(parts.hostname, port, allow_private=allow_private)


class PinnedTransport(httpx.BaseTransport):
    """An httpx transport that checks every request's host (the rule above) and connects to the
    address it checked: the name stays in the Host header and is what TLS verifies, so nothing
    resolves the name a second time. Every redirect hop is a new request, so it is checked too."""

    def __init__(self, *, allow_private: bool = False, **transport_options):
        self.allow_private = allow_private
        self._inner = httpx.HTTPTransport(**transport_options)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        address = check_url(str(url), allow_private=self.allow_private)
        if url.scheme == "https":
            request.extensions = {**request.extensions, "sni_hostname": url.host}
        request.url = url.copy_with(host=address)  # the Host header was set from the name already
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


# A server that answers "too many requests" or "unavailable" is asked again, after the wait it
# names (Retry-After, at most MAX_RETRY_WAIT seconds) or a growing pause, within the deadline.
BUSY_STATUSES = (429, 503)
MAX_TRIES = 3
MAX_RETRY_WAIT = 10.0


class _Busy(Exception):
    def __init__(self, status: int, retry_after: float | None):
        self.status, self.retry_after = status, retry_after


def download(
    client: httpx.Client, url: str, *, max_bytes: int, deadline_seconds: float | None = None, content_prefix: str = "image/"
) -> bytes:
    """GET `url` with a client from `download_client()`, following at most MAX_REDIRECTS redirects
    (each hop checked by its transport); refuse a wrong content type or more than `max_bytes`;
    ask a busy server again (BUSY_STATUSES); stop at the deadline. Raises DomainError."""
    if deadline_seconds is None:
        deadline_seconds = settings.BENCHFORGE_DOWNLOAD_DEADLINE
    deadline = time.monotonic() + deadline_seconds
    for attempt in range(1, MAX_TRIES + 1):
        try:
            return _download_once(client, url, max_bytes, deadline, deadline_seconds, content_prefix)
        except _Busy as busy:
            wait = min(MAX_RETRY_WAIT, busy.retry_after if busy.retry_after is not None else float(attempt))
            if attempt == MAX_TRIES or time.monotonic() + wait >= deadline:
                raise DomainError(
                    f"The server answered HTTP {busy.status} ({'too many requests' if busy.status == 429 else 'unavailable'}) "
                    f"{attempt} time(s). Resume the job later to try this image again"
                    f"{', or lower BENCHFORGE_DOWNLOADS_PER_SITE' if busy.status == 429 else ''}."
                ) from None
            time.sleep(wait)
    raise AssertionError("unreachable")


def _download_once(client, url: str, max_bytes: int, deadline: float, deadline_seconds: float, prefix: str) -> bytes:
    try:
        for _hop in range(MAX_REDIRECTS + 1):
            _check_form(url)  # the address itself is checked by the transport, when connecting
            with client.stream("GET", url) as response:
                if response.is_redirect:
                    url = str(httpx.URL(url).join(response.headers.get("location", "")))
                    continue
                return _read_body(response, max_bytes, deadline, deadline_seconds, prefix)
        raise DomainError(f"More than {MAX_REDIRECTS} redirects.")
    except httpx.TimeoutException:
        raise DomainError("The download timed out.") from None
    except httpx.HTTPError as exc:
        raise DomainError(f"Download failed: {exc}.") from None


def _retry_after(value: str) -> float | None:
    """Seconds a Retry-After header asks for (a number of seconds or an HTTP date); None if unreadable."""
    value = value.strip()
    if is_digits(value):
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _read_body(response: httpx.Response, max_bytes: int, deadline: float, deadline_seconds: float, prefix: str) -> bytes:
    if response.status_code in BUSY_STATUSES:
        raise _Busy(response.status_code, _retry_after(response.headers.get("retry-after", "")))
    if response.status_code != 200:
        raise DomainError(f"The server answered HTTP {response.status_code}.")
    ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if prefix and not ctype.startswith(prefix):
        raise DomainError(f"Not an image: the server sent content-type '{ctype or 'none'}'.")
    declared = response.headers.get("content-length", "")
    if is_digits(declared) and int(declared) > max_bytes:
        raise DomainError(f"The image is {int(declared) / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.0f} MB.")
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise DomainError(f"The download exceeded the {max_bytes / 1e6:.0f} MB limit; stopped.")
        if time.monotonic() > deadline:
            raise DomainError(
                f"The download took longer than {deadline_seconds:.0f} s; stopped "
                f"({size} bytes received). The server is too slow, or sends very slowly on purpose."
            )
        chunks.append(chunk)
    return b"".join(chunks)


def site_of(url: str) -> str:
    """The site a URL belongs to, for pacing downloads: its scheme, host and port."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # a malformed port: download() refuses the URL itself
        port = None
    return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}:{port or ''}"


def download_client(*, allow_private: bool | None = None) -> httpx.Client:
    """The client `download` expects: every connection checked and pinned, redirects followed by
    hand (each hop checked), short timeouts. Private addresses only when the operator allows them."""
    if allow_private is None:
        allow_private = settings.BENCHFORGE_URL_IMPORT_ALLOW_PRIVATE
    return httpx.Client(
        timeout=httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT),
        follow_redirects=False,
        headers={"User-Agent": USER_AGENT},
        trust_env=False,
        # A connection kept open per download thread (the client's own limits do not reach a transport).
        transport=PinnedTransport(
            allow_private=allow_private, limits=httpx.Limits(max_keepalive_connections=settings.BENCHFORGE_DOWNLOADS)
        ),
    )
