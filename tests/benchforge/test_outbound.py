"""Addresses people type: only public ones, checked per redirect hop, connected to exactly as
checked (no second DNS lookup), with a total deadline per download."""

import http.server
import threading
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import pytest

from benchforge import outbound
from benchforge.errors import DomainError
from tests.factories import jpeg


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.1",
        "127.0.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "100.100.100.200",
        "192.168.1.1",
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "fc00::1",
        "fe80::1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::a00:1",
        "2002:a00:1::1",
    ],
)
def test_internal_addresses_are_not_public(address):
    assert not outbound.is_public(address)


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_are(address):
    assert outbound.is_public(address)


def test_names_resolving_to_any_internal_address_are_refused(fake_dns):
    fake_dns({"metadata.test": "100.100.100.200", "mixed.test": ["93.184.216.34", "10.1.2.3"]})
    for host in ("metadata.test", "mixed.test"):
        with pytest.raises(DomainError, match="internal address"):
            outbound.check_url(f"http://{host}/x.jpg")
    with pytest.raises(DomainError, match="Only http"):
        outbound.check_url("file:///etc/passwd")


class Handler(http.server.BaseHTTPRequestHandler):
    routes: dict = {}

    def do_GET(self):
        Handler.hosts.append(self.headers.get("Host"))  # before answering: the test reads it after the reply
        kind, value = self.routes.get(self.path, ("missing", None))
        if kind == "redirect":
            self.send_response(302)
            self.send_header("Location", value)
            self.end_headers()
        elif kind == "image":
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(len(value)))
            self.end_headers()
            self.wfile.write(value)
        elif kind == "busy":  # (status, Retry-After or None, how many times before the image)
            status, retry_after, times = value
            Handler.asked[self.path] = Handler.asked.get(self.path, 0) + 1
            if Handler.asked[self.path] <= times:
                self.send_response(status)
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                body = jpeg(9005)
                self.send_response(200)
                self.send_header("Content-Type", "image/jpeg")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        elif kind == "dribble":
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(1000):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(value)
            except (BrokenPipeError, ConnectionResetError):
                pass
        else:
            self.send_response(404)
            self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    Handler.hosts, Handler.asked = [], {}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def test_the_connection_goes_to_the_checked_address(server, fake_dns):
    # "images.test" exists only in our resolver: had the client looked the name up again to
    # connect, it would have failed. It connected to the checked address, with the name as Host.
    calls = fake_dns({"images.test": "127.0.0.1"})
    Handler.routes = {"/a.jpg": ("image", jpeg(9001))}
    with outbound.download_client(allow_private=True) as client:
        data = outbound.download(client, f"http://images.test:{server}/a.jpg", max_bytes=10**6)
    assert data == jpeg(9001)
    assert calls == ["images.test"] and Handler.hosts == [f"images.test:{server}"]


def test_every_redirect_hop_is_checked(server, fake_dns, monkeypatch):
    # Here 127.0.0.1 counts as public and 127.0.0.2 as internal; the redirect target is refused.
    monkeypatch.setattr(outbound, "is_public", lambda address: address == "127.0.0.1")
    fake_dns({"public.test": "127.0.0.1", "internal.test": "127.0.0.2"})
    Handler.routes = {"/start": ("redirect", f"http://internal.test:{server}/a.jpg"), "/a.jpg": ("image", jpeg(9002))}
    with outbound.download_client(allow_private=False) as client, pytest.raises(DomainError, match="internal address"):
        outbound.download(client, f"http://public.test:{server}/start", max_bytes=10**6)
    assert len(Handler.hosts) == 1  # the internal address was never contacted


def test_redirect_loops_stop(server, fake_dns):
    fake_dns({"loop.test": "127.0.0.1"})
    Handler.routes = {"/loop": ("redirect", "/loop")}
    with outbound.download_client(allow_private=True) as client, pytest.raises(DomainError, match="More than 5 redirects"):
        outbound.download(client, f"http://loop.test:{server}/loop", max_bytes=10**6)


def test_a_dribbling_server_is_cut_off_at_the_deadline(server):
    Handler.routes = {"/slow.jpg": ("dribble", 0.2)}  # one byte every 0.2 s: never silent long enough to time out
    started = time.monotonic()
    with outbound.download_client(allow_private=True) as client, pytest.raises(DomainError, match="took longer than 2 s"):
        outbound.download(client, f"http://127.0.0.1:{server}/slow.jpg", max_bytes=10**6, deadline_seconds=2)
    assert time.monotonic() - started < 4


def test_label_studio_urls_get_the_same_checks(benchmark, researcher, fake_dns, settings, monkeypatch):
    from labelstudio import services as lss
    from labelstudio.models import LabelStudioConnection

    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    fake_dns({"ls.internal": "10.0.0.5", "ls.public": "93.184.216.34"})
    with pytest.raises(DomainError, match="internal address"):
        lss.save_connection(benchmark, url="http://ls.internal:8080", token_env="LABEL_STUDIO_API_KEY", user=researcher)
    with pytest.raises(DomainError, match="internal address"):
        lss.save_connection(benchmark, url="http://169.254.169.254/", token_env="LABEL_STUDIO_API_KEY", user=researcher)
    assert not LabelStudioConnection.objects.filter(benchmark=benchmark).exclude(url="").exists()
    lss.save_connection(benchmark, url="http://ls.public:8080", token_env="LABEL_STUDIO_API_KEY", user=researcher)
    # The operator's own LABEL_STUDIO_URL is trusted, and so is a private one when allowed.
    monkeypatch.setenv("LABEL_STUDIO_URL", "http://ls.internal:8080")
    lss.save_connection(benchmark, url="http://ls.internal:8080", token_env="LABEL_STUDIO_API_KEY", user=researcher)
    monkeypatch.delenv("LABEL_STUDIO_URL")
    settings.BENCHFORGE_LABEL_STUDIO_ALLOW_PRIVATE = True
    lss.save_connection(benchmark, url="http://ls.internal:8081", token_env="LABEL_STUDIO_API_KEY", user=researcher)


def test_url_imports_refuse_shared_address_space(benchmark, researcher, tmp_path, fake_dns):
    from curation import services
    from jobs.services import run_now

    fake_dns({"cgnat.test": "100.64.1.1"})
    listing = tmp_path / "urls.txt"
    listing.write_text("http://cgnat.test/a.jpg\n")
    job = run_now(services.create_import_job("ingest_url_list", benchmark, user=researcher, path=str(listing)))
    (entry,) = job.entries.all()
    assert entry.outcome == "error" and "internal address" in entry.message


def test_httpx_is_not_told_to_follow_redirects():
    with outbound.download_client() as client:
        assert client.follow_redirects is False and isinstance(client, httpx.Client)


def test_label_studio_connections_are_pinned_to_the_checked_address(benchmark, monkeypatch):
    """The Label Studio client connects through the same pinned transport: a name that resolves to a
    public address when the URL is checked cannot be sent to an internal one for the connection."""
    import socket

    from labelstudio import services as lss
    from labelstudio.models import LabelStudioConnection

    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "token")
    answers = iter(["93.184.216.34", "10.0.0.9"])  # public at the check, internal afterwards
    real = socket.getaddrinfo

    def rebinding(host, port, *args, **kwargs):
        if host == "ls.rebind":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    LabelStudioConnection.objects.create(benchmark=benchmark, url="http://ls.rebind:8080")
    client = lss.open_client(benchmark)  # checked here: public
    transport = client._http._transport
    assert isinstance(transport, outbound.PinnedTransport) and transport.allow_private is False
    with pytest.raises(DomainError, match="internal address"):  # checked again when connecting: internal now
        transport.handle_request(httpx.Request("GET", "http://ls.rebind:8080/api/projects"))


def test_a_busy_server_is_asked_again_after_the_wait_it_names(server, monkeypatch):
    Handler.routes = {
        "/twice.jpg": ("busy", (429, "0", 2)),  # "too many requests" twice, then the image
        "/down.jpg": ("busy", (503, None, 99)),
        "/later.jpg": ("busy", (429, "120", 99)),  # asks for more than the deadline leaves
    }
    monkeypatch.setattr(outbound, "MAX_RETRY_WAIT", 0.05)
    base = f"http://127.0.0.1:{server}"
    with outbound.download_client(allow_private=True) as client:
        assert outbound.download(client, f"{base}/twice.jpg", max_bytes=10**6) == jpeg(9005)
        with pytest.raises(DomainError, match=r"HTTP 503 \(unavailable\) 3 time\(s\)\. Resume the job later"):
            outbound.download(client, f"{base}/down.jpg", max_bytes=10**6)
        monkeypatch.setattr(outbound, "MAX_RETRY_WAIT", 10.0)
        started = time.monotonic()
        with pytest.raises(DomainError, match="HTTP 429 .* 1 time.*BENCHFORGE_DOWNLOADS_PER_SITE"):
            outbound.download(client, f"{base}/later.jpg", max_bytes=10**6, deadline_seconds=5)
        assert time.monotonic() - started < 2  # no waiting past the deadline for nothing
    assert Handler.asked == {"/twice.jpg": 3, "/down.jpg": 3, "/later.jpg": 1}


def test_retry_after_reads_seconds_and_http_dates():
    soon = datetime.now(timezone.utc) + timedelta(seconds=30)
    assert outbound._retry_after("7") == 7.0
    assert 25 < outbound._retry_after(format_datetime(soon, usegmt=True)) <= 30
    assert outbound._retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: at once
    assert outbound._retry_after("soon") is None
