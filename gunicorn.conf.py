"""gunicorn's settings for benchforge, read by `gunicorn benchforge.wsgi` started in this folder
(command-line options still override them).

keepalive: how long gunicorn keeps an idle connection open for the client's next request. Its
default, 2 s, is shorter than the idle time after which clients stop reusing a connection (httpx and
the Python API clients: 5 s; a reverse proxy's upstream pool: often 60 s). A client then sends its
next request on a connection that the server is closing at that very moment, and gets no answer:
"Server disconnected without sending a response" or "Connection reset by peer" (the threaded worker
closes an idle connection when its time is up, even with a request just arriving; issue 45's soak
lost 2 requests in 5,091 that way, with nothing in gunicorn's log). The server must wait longer than
any client or proxy in front of it: keep a proxy's idle timeout below this.
"""

keepalive = 75
