"""Create Superset's admin, or set its password when it exists: the password comes on stdin.

Runs with the Python of Superset's own environment (``pathwatch stack up``; docker-compose's
superset-start.sh) as ``python set_admin.py USERNAME`` with the password as the first line of
standard input, so it is never on a command line (``superset fab create-admin --password``
would put it there, visible to every local user in ``ps``). It does what that command and
``fab reset-password`` do, through Flask-AppBuilder's security manager.
"""

import sys


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: set_admin.py USERNAME  (password on stdin)", file=sys.stderr)
        return 2
    username = argv[0]
    password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        print("set_admin.py: no password on stdin", file=sys.stderr)
        return 2
    from superset.app import create_app

    app = create_app()
    with app.app_context():
        manager = app.appbuilder.sm
        user = manager.find_user(username=username)
        if user is not None:
            manager.reset_password(user.id, password)
            print(f"admin {username}: password set")
            return 0
        role = manager.find_role(manager.auth_role_admin)
        if role is None:
            print(f"set_admin.py: no role {manager.auth_role_admin!r} (run `superset db upgrade` first)", file=sys.stderr)
            return 1
        if not manager.add_user(username, "pathwatch", "admin", f"{username}@localhost", role, password):
            print(f"set_admin.py: admin {username} could not be created", file=sys.stderr)
            return 1
        print(f"admin {username}: created")
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
