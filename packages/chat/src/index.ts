export { DashboardChatRunner, mountDashboardChat, CHAT_CLIENT, type DashboardChatOptions } from "./chat.js";
export { chatKeyConfigured, chatModel, DEFAULT_ANTHROPIC_MODEL, type ChatModel } from "./model.js";
