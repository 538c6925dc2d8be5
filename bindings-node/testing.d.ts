export interface RunningEmulator {
  url: string
  pid: number
  routerOptions (): { endpointUrl: string; accessKeyId: string; secretAccessKey: string }
  /** A short-term Bedrock API key for the emulator's test credentials (an `openai` client's `apiKey`). */
  bedrockApiKey (region?: string): string
  addFault (fault: Record<string, unknown>): Promise<void>
  /** Removes every injected fault. */
  clearFaults (): Promise<void>
  counters (): Promise<Array<Record<string, any>>>
  stop (): Promise<void>
}
export function startEmulator (options?: { scenario?: string; timeScale?: number }): Promise<RunningEmulator>
export function findBinary (): string
export function bedrockApiKey (accessKeyId: string, secretAccessKey: string, region: string, expiresS?: number): string
export const ACCESS_KEY_ID: string
export const SECRET_ACCESS_KEY: string
