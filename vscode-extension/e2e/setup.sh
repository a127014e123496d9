#!/usr/bin/env bash
# Install code-server (a real VS Code, from the npm registry) for `npm run e2e`, offline.
# Recipe: ../../shared/editor-testing.md. Idempotent: a finished install is left alone.
# Needs (Debian): apt-get install -y libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev
#                 pkg-config ripgrep chromium
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${SOLAR_E2E_DIR:-$HERE/.e2e}/code-server"
VERSION="${CODE_SERVER_VERSION:-4.100.3}"   # the last release that runs on node 20
CS="$DEST/node_modules/code-server"
if [[ -f "$CS/.solar-e2e-ready" ]]; then
  echo "code-server $VERSION ready at $CS"; exit 0
fi
for tool in rg pkg-config; do
  command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install -y ripgrep pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev" >&2; exit 2; }
done
export npm_config_yes=true npm_config_nodedir="${npm_config_nodedir:-/usr}"
mkdir -p "$DEST"
cd "$DEST"
[[ -f package.json ]] || echo '{"name":"solar-e2e-code-server","private":true}' > package.json
npm install --no-audit --no-fund --ignore-scripts "code-server@$VERSION"

install_tree() {  # npm install + native rebuild of one of code-server's node_modules trees
  (cd "$1" && npm install --omit=dev --ignore-scripts --no-audit --no-fund \
     && { [[ ! -d node_modules/@vscode/ripgrep ]] || { mkdir -p node_modules/@vscode/ripgrep/bin && ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg; }; } \
     && npm rebuild)
}
install_tree "$CS/lib/vscode"
if [[ -f "$CS/lib/vscode/node_modules.asar" && ! -L "$CS/lib/vscode/node_modules.asar" ]]; then
  rm -f "$CS/lib/vscode/node_modules.asar"
fi
ln -sfn node_modules "$CS/lib/vscode/node_modules.asar"
ln -sf code-linux.sh "$CS/lib/vscode/bin/remote-cli/code-server"
ln -sf browser-linux.sh "$CS/lib/vscode/bin/helpers/browser.sh"
install_tree "$CS/lib/vscode/extensions"
(cd "$DEST" && npm rebuild argon2)   # hoisted next to code-server; its CLI loads it at start
touch "$CS/.solar-e2e-ready"
echo "code-server $VERSION ready at $CS"
