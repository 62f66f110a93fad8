# Sourced by the browser tests with $src set to the source tree: exits 77 (CTest: skipped) naming what is missing
# when node, Chromium ($CHROMIUM, else /usr/bin/chromium) or tools/browser-check's npm packages are absent.
chromium=${CHROMIUM:-/usr/bin/chromium}
for need in node "$chromium"; do
  command -v "$need" >/dev/null || { echo "skipped: $need not found (scripts/install-deps.sh installs it)"; exit 77; }
done
[[ -d $src/tools/browser-check/node_modules/puppeteer-core ]] ||
  { echo "skipped: tools/browser-check/node_modules missing (scripts/install-deps.sh runs npm ci there)"; exit 77; }
