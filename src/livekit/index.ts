/**
 * `voxgate/livekit`: LiveKit Agents (Node) through Voxgate. `voxgateGateway()` points each plugin at
 * Voxgate's gateway routes; `attach()` meters an AgentSession (turns, dead air, records of components
 * that bypass the gateway) and heartbeats the worker. The LiveKit packages are optional peers.
 */
export { type AgentSessionLike, type AttachableSession, type AttachOptions, type AttachStats, type Attachment, attach, closeAttachClients } from "./attach.js";
export {
  GatewayModelError,
  type GatewayModel,
  type Modality,
  type ModelSpec,
  type ModelTable,
  type PluginOptions,
  type Stack,
  type VoxgateGateway,
  type VoxgateGatewayOptions,
  voxgateGateway,
} from "./gateway.js";
export { PLUGIN_PACKAGES, PluginMissingError, trackInstance, type Vendor } from "./plugins.js";
