"""The team API token: `Authorization: Team <token>`. It acts as the team (request.auth is the
Team) and as the member who made it (request.user), for that team's window only."""

from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed

KEYWORD = b"team"


class TeamTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != KEYWORD:
            return None
        if len(parts) != 2:
            raise AuthenticationFailed("Invalid team token header: 'Team <token>'.")
        from . import selectors

        try:
            token = parts[1].decode()
        except UnicodeDecodeError:
            raise AuthenticationFailed("Invalid team token.") from None
        team = selectors.team_for_token(token)
        if team is None:
            raise AuthenticationFailed("Invalid team token.")
        return team.created_by, team

    def authenticate_header(self, request):
        return "Team"
