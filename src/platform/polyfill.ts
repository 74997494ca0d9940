/**
 * Node 20 lacks `Promise.withResolvers`, which libp2p and its dependencies call at module load and at run time.
 * Every entry point imports this module first, before anything that may load libp2p.
 */
interface PromiseWithResolversShim {
  withResolvers?: <T>() => { promise: Promise<T>; resolve: (value: T) => void; reject: (reason?: unknown) => void }
}

const promiseCtor = Promise as unknown as PromiseWithResolversShim

if (typeof promiseCtor.withResolvers !== "function") {
  promiseCtor.withResolvers = <T>() => {
    let resolve!: (value: T) => void
    let reject!: (reason?: unknown) => void
    const promise = new Promise<T>((res, rej) => {
      resolve = res
      reject = rej
    })
    return { promise, resolve, reject }
  }
}

export {}
