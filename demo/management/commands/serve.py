from django.contrib.staticfiles.management.commands.runserver import Command as RunserverCommand

from jobs import sweeper


class Command(RunserverCommand):
    """`make run`'s server: Django's development server, which prints one line once it listens, with
    the address it really listens on (PORT=0 picks a free port), instead of its banner."""

    help = "The development server for `make run`, announcing itself in one line with the port it listens on."

    def on_bind(self, server_port):
        host = f"[{self.addr}]" if self._raw_ipv6 else ("0.0.0.0" if self.addr == "0" else self.addr)
        self.stdout.write(f"benchforge is running: open {self.protocol}://{host}:{server_port}/  (CONTROL-C stops it)")
        self.stdout.flush()
        # Jobs run in this process's threads (no broker): what a killed server left comes back now.
        sweeper.start_for_threads()
