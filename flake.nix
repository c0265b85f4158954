{
  description = "node-registry: development shell (Node 20, PostgreSQL 17, Chromium on Linux)";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-24.11";

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
            packages = [ pkgs.nodejs_20 pkgs.postgresql_17 ]
              ++ lib.optionals stdenv.isLinux [ pkgs.chromium ];

            # The browser test reads CHROMIUM_PATH; on Linux it is the shell's own Chromium,
            # elsewhere whatever chromium is on PATH, if any.
            shellHook = ''
              if [ -z "$CHROMIUM_PATH" ]; then
                ${lib.optionalString stdenv.isLinux "export CHROMIUM_PATH=${pkgs.chromium}/bin/chromium"}
                if [ -z "$CHROMIUM_PATH" ] && command -v chromium >/dev/null 2>&1; then
                  export CHROMIUM_PATH="$(command -v chromium)"
                fi
              fi
            '';
          };
        });
    };
}
