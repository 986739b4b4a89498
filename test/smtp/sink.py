"""An aiosmtpd handler for gpusuite's tests: each message into a Maildir
with the login that sent it (X-Login) and whether it came over TLS
(X-TLS), and AUTH PLAIN for one user and password.

    python3 -m aiosmtpd -n -l 127.0.0.1:PORT [--tlscert C --tlskey K] \
        -c sink.Sink MAILDIR [USER PASSWORD]
"""
import base64
import binascii

from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import AuthResult, LoginPassword


class Sink(Mailbox):
    def __init__(self, maildir, user=None, password=None):
        super().__init__(maildir)
        self.user = user.encode() if user else None
        self.password = password.encode() if password else None

    @classmethod
    def from_cli(cls, parser, *args):
        if len(args) not in (1, 3):
            parser.error("Sink takes MAILDIR [USER PASSWORD]")
        return cls(*args)

    def prepare_message(self, session, envelope):
        message = super().prepare_message(session, envelope)
        login = session.login_data
        if isinstance(login, bytes):
            login = login.decode()
        message["X-Login"] = login or ""
        message["X-TLS"] = "yes" if session.ssl is not None else "no"
        return message

    async def auth_PLAIN(self, server, args):
        # net/smtp sends the credentials with the command:
        # AUTH PLAIN base64(authzid NUL user NUL password)
        if self.user is None or len(args) != 2:
            return AuthResult(success=False, handled=False)
        try:
            _, user, password = base64.b64decode(args[1], validate=True).split(b"\0")
        except (binascii.Error, ValueError):
            return AuthResult(success=False, handled=False)
        if (user, password) != (self.user, self.password):
            return AuthResult(success=False, handled=False)
        return AuthResult(success=True, auth_data=LoginPassword(user, password))
