/** A plain libp2p host on loopback (TCP, noise, yamux) with a fixed key, for tests of what runs over its streams. */
import { noise } from "@chainsafe/libp2p-noise"
import { generateKeyPairFromSeed } from "@libp2p/crypto/keys"
import type { Libp2p } from "@libp2p/interface"
import { tcp } from "@libp2p/tcp"
import { yamux } from "@libp2p/yamux"
import { createLibp2p } from "libp2p"

export const bareHost = async (seed: number): Promise<Libp2p> =>
  createLibp2p({
    privateKey: await generateKeyPairFromSeed("Ed25519", new Uint8Array(32).fill(seed)),
    addresses: { listen: ["/ip4/127.0.0.1/tcp/0"] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
  })
